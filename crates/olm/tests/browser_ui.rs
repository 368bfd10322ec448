//! The catalog browser in a real browser: headless chromium driven over WebDriver loads every
//! kind of page of `olm catalog serve-ui` for the data catalog and a hostile one, checks the
//! rendered DOM against `olm resolve`, zooms and highlights the upgrade graph, and takes the
//! screenshots docs/browser.md shows (kept in `$CARGO_TARGET_TMPDIR/browser`, or in
//! `$OLM_SCREENSHOTS` when set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{DATA, olm};
use olm_testenv::browser::Browser;
use serde_json::{Value, json};

/// `olm catalog serve-ui` on a free port, stopped on drop.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(refs: &[String]) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_olm"))
            .args([
                "catalog",
                "serve-ui",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .args(refs)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
                panic!("serve-ui exited ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "serve-ui did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const EVIL: &str = "<script>window.__pwned=1</script>\"'><img src=x onerror=\"window.__pwned=2\">";

/// A catalog with script in every text field, a huge name, and 10,000 bundles in one channel.
fn hostile_catalog(dir: &std::path::Path) {
    let pkg = "evil";
    let mut lines = vec![
        json!({"schema": "olm.package", "name": pkg, "defaultChannel": "long",
        "description": format!("# Title {EVIL}\n\n<script>window.__pwned=3</script>\n\n[x](javascript:window.__pwned=4)"),
        "icon": {"base64data": "PHN2Zz48L3N2Zz4=", "mediatype": format!("image/svg+xml\">{EVIL}")}}),
    ];
    let meta = json!({"displayName": EVIL, "provider": {"name": EVIL}, "keywords": [EVIL],
        "description": EVIL, "annotations": {"description": EVIL, "alm-examples": EVIL, "categories": EVIL},
        "links": [{"name": EVIL, "url": "javascript:window.__pwned=5"}],
        "maintainers": [{"name": EVIL, "email": EVIL}]});
    let mut entries = Vec::new();
    for i in 0..10_000 {
        let name = format!("evil.v1.{}.{}", i / 100, i % 100);
        let mut e = json!({"name": name});
        if i > 0 {
            e["replaces"] = json!(format!("evil.v1.{}.{}", (i - 1) / 100, (i - 1) % 100));
        }
        entries.push(e);
        let mut props = vec![
            json!({"type": "olm.package", "value": {"packageName": pkg, "version": format!("1.{}.{}", i / 100, i % 100)}}),
        ];
        if i == 9_999 {
            props.push(json!({"type": "olm.csv.metadata", "value": meta}));
        }
        lines.push(json!({"schema": "olm.bundle", "package": pkg, "name": name, "image": format!("example.com/evil:{i}"), "properties": props}));
    }
    lines
        .push(json!({"schema": "olm.channel", "package": pkg, "name": "long", "entries": entries}));
    let huge = format!("{}{EVIL}", "x".repeat(5_000));
    lines.push(json!({"schema": "olm.channel", "package": pkg, "name": huge, "entries": [{"name": "evil.v1.0.0"}]}));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.json"), text).unwrap();
}

fn shots() -> PathBuf {
    let dir = std::env::var_os("OLM_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits until `script` returns true.
fn until(b: &mut Browser, script: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while b.eval(script, &[]).unwrap() != Value::Bool(true) {
        assert!(Instant::now() < deadline, "timed out waiting for: {script}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn resolve(catalog: &str, args: &[&str]) -> String {
    let spec = format!("c={catalog}");
    let mut all = vec![
        "resolve",
        "--catalog",
        &spec,
        "--package",
        "infinispan",
        "-o",
        "json",
    ];
    all.extend_from_slice(args);
    let run = olm(&all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    v["bundle"].as_str().unwrap().to_owned()
}

#[test]
fn pages_render_resolve_and_draw_in_chromium() {
    let community = format!("{DATA}/catalogs/community-v4.21");
    let tmp = tempfile::tempdir().unwrap();
    let evil_dir = tmp.path().join("evil");
    hostile_catalog(&evil_dir);
    let server = Server::start(&[
        format!("community={community}"),
        format!("hostile={}", evil_dir.display()),
    ]);
    let base = &server.base;
    let shots = shots();
    let mut b = Browser::start(1400, 1000)
        .expect("chromium and chromedriver (scripts/setup.sh installs them)");

    // Catalogs.
    b.goto(&format!("{base}/browse/")).unwrap();
    let rows = b
        .eval("return Array.from(document.querySelectorAll('table.catalogs tbody tr td:first-child')).map(t => t.textContent)", &[])
        .unwrap();
    assert_eq!(rows, json!(["community", "hostile"]));
    b.screenshot(&shots.join("catalogs.png")).unwrap();

    // Search, through the form in the header.
    b.type_into("#q", "infinispan").unwrap();
    b.click("form.search button").unwrap();
    until(&mut b, "return location.pathname === '/browse/search'");
    let hits = b
        .eval("return Array.from(document.querySelectorAll('tr.result small')).map(t => t.textContent)", &[])
        .unwrap();
    assert_eq!(hits, json!(["infinispan"]));
    b.goto(&format!("{base}/browse/search?category=Database"))
        .unwrap();
    let count = b
        .eval("return document.querySelectorAll('tr.result').length", &[])
        .unwrap();
    assert!(count.as_u64().unwrap() >= 2, "{count}");
    b.screenshot(&shots.join("search.png")).unwrap();

    // Package: channel heads, and what a ClusterExtension would get, as `olm resolve` says.
    b.goto(&format!(
        "{base}/browse/catalogs/community/packages/infinispan"
    ))
    .unwrap();
    let head = b
        .eval(
            "return document.querySelector('tr[data-channel=\"stable\"] a.head').textContent",
            &[],
        )
        .unwrap();
    assert_eq!(head, json!(resolve(&community, &["--channel", "stable"])));
    b.screenshot(&shots.join("package.png")).unwrap();
    b.click("select[name=channel] option[value=\"stable\"]")
        .unwrap();
    b.type_into("input[name=version]", ">=2.4.0 <2.5.0")
        .unwrap();
    b.click("form.resolve button").unwrap();
    until(
        &mut b,
        "return document.getElementById('resolved-bundle') !== null",
    );
    let got = b
        .eval(
            "return document.getElementById('resolved-bundle').textContent",
            &[],
        )
        .unwrap();
    assert_eq!(
        got,
        json!(resolve(
            &community,
            &["--channel", "stable", "--version", ">=2.4.0 <2.5.0"]
        ))
    );
    b.eval("document.getElementById('would-get').scrollIntoView()", &[])
        .unwrap();
    b.screenshot(&shots.join("would-get.png")).unwrap();

    // The graph: zoom, then hover a bundle to highlight its paths.
    b.eval("document.getElementById('graph').scrollIntoView()", &[])
        .unwrap();
    assert_eq!(
        b.eval("return document.querySelector('.graph-tools').hidden", &[])
            .unwrap(),
        json!(false)
    );
    let width = "return document.querySelector('#graph-view svg').viewBox.baseVal.width";
    let before = b.eval(width, &[]).unwrap().as_f64().unwrap();
    b.hover(".node[data-name=\"infinispan-operator.v2.2.2\"]")
        .unwrap();
    until(
        &mut b,
        "return document.querySelector('#graph-view svg').classList.contains('highlighting')",
    );
    let lit = b
        .eval("return Array.from(document.querySelectorAll('#graph-view .node.hl')).map(n => n.dataset.name)", &[])
        .unwrap();
    for n in [
        "infinispan-operator.v2.2.1",
        "infinispan-operator.v2.2.2",
        "infinispan-operator.v2.2.3",
    ] {
        assert!(
            lit.as_array().unwrap().contains(&json!(n)),
            "{n} not highlighted: {lit}"
        );
    }
    let edges = b
        .eval(
            "return document.querySelectorAll('#graph-view .edge.hl').length",
            &[],
        )
        .unwrap();
    assert!(edges.as_u64().unwrap() >= 2, "{edges}");
    // The pointer leaves the graph first: left over a node, the scroll below would slide
    // another node under it, whose hover highlight would replace the focus one at random.
    b.hover("#graph").unwrap();
    until(
        &mut b,
        "return !document.querySelector('#graph-view svg').classList.contains('highlighting')",
    );
    b.eval(
        "document.getElementById('graph').scrollIntoView({block: 'start'})",
        &[],
    )
    .unwrap();
    // Keyboard focus highlights as hovering does.
    b.eval(
        "document.querySelector('#graph-view .node[data-name=\"infinispan-operator.v2.3.8\"]').focus({preventScroll: true})",
        &[],
    )
    .unwrap();
    until(
        &mut b,
        "return document.querySelector('#graph-view .node[data-name=\"infinispan-operator.v2.3.0\"]').classList.contains('hl')",
    );
    b.screenshot(&shots.join("graph.png")).unwrap();
    b.click("[data-zoom=in]").unwrap();
    let after = b.eval(width, &[]).unwrap().as_f64().unwrap();
    assert!(after < before, "zoom in: {before} -> {after}");

    // Bundle page with its ClusterExtension.
    b.click("tr[data-channel=\"stable\"] a.head").unwrap();
    until(
        &mut b,
        "return document.getElementById('cluster-extension') !== null",
    );
    let yaml = b
        .eval(
            "return document.getElementById('cluster-extension').textContent",
            &[],
        )
        .unwrap();
    assert!(
        yaml.as_str().unwrap().contains("packageName: infinispan\n"),
        "{yaml}"
    );
    b.screenshot(&shots.join("bundle.png")).unwrap();

    // Dark.
    b.dark(true).unwrap();
    b.goto(&format!(
        "{base}/browse/catalogs/community/packages/infinispan"
    ))
    .unwrap();
    let bg = b
        .eval(
            "return getComputedStyle(document.body).backgroundColor",
            &[],
        )
        .unwrap();
    assert_eq!(bg, json!("rgb(13, 17, 23)"));
    b.screenshot(&shots.join("package-dark.png")).unwrap();
    b.dark(false).unwrap();

    // The hostile catalog: nothing runs, everything is shown as text, 10,000 bundles draw.
    let started = Instant::now();
    b.goto(&format!("{base}/browse/catalogs/hostile/packages/evil"))
        .unwrap();
    let loaded = started.elapsed();
    let state = b
        .eval("return {pwned: window.__pwned === undefined, scripts: document.scripts.length, nodes: document.querySelectorAll('#graph-view .node').length, title: document.querySelector('h1').textContent}", &[])
        .unwrap();
    assert_eq!(state["pwned"], json!(true), "{state}");
    assert_eq!(state["scripts"], json!(1), "{state}");
    assert_eq!(state["nodes"], json!(10_001), "{state}");
    assert_eq!(state["title"], json!(EVIL), "{state}");
    eprintln!("hostile package page with 10,000 bundles loaded in {loaded:?}");
    b.screenshot(&shots.join("hostile.png")).unwrap();
    for page in [
        "/browse/search?q=evil",
        "/browse/catalogs/hostile/packages/evil/bundles/evil.v1.99.99",
    ] {
        b.goto(&format!("{base}{page}")).unwrap();
        let ok = b
            .eval(
                "return window.__pwned === undefined && document.scripts.length === 1",
                &[],
            )
            .unwrap();
        assert_eq!(ok, json!(true), "{page}");
    }
}

/// One raw HTTP/1.1 request; the whole answer as text.
fn http(base: &str, method: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Every answer carries the security headers, writes are refused everywhere, and a catalog's
/// priority and labels are given as a ClusterCatalog's would be.
#[test]
fn serve_ui_answers_safely_and_takes_catalog_specs() {
    let catalog = format!("{DATA}/catalogs/community-v4.21");
    let server = Server::start(&[
        format!("low={catalog}"),
        format!("high={catalog},priority=5,label=team=a"),
    ]);
    for (method, path, status) in [
        ("GET", "/browse/", "200 OK"),
        ("GET", "/browse", "301 Moved Permanently"),
        ("GET", "/favicon.ico", "301 Moved Permanently"),
        ("POST", "/", "405 Method Not Allowed"),
        ("POST", "/browse/", "405 Method Not Allowed"),
        ("GET", "/browse/nope", "404 Not Found"),
    ] {
        let answer = http(&server.base, method, path);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}\r\n")),
            "{method} {path}: {answer}"
        );
        let head = answer.to_lowercase();
        for header in [
            "content-security-policy: default-src 'none'",
            "x-content-type-options: nosniff",
            "x-frame-options: deny",
        ] {
            assert!(head.contains(header), "{method} {path}: {answer}");
        }
    }
    let page = http(&server.base, "GET", "/browse/");
    assert!(page.contains(">high</a></td><td>5</td>"), "{page}");
    assert!(page.contains(">low</a></td><td>0</td>"), "{page}");
    // Every catalog, by priority: the higher one wins the tie the same content would be.
    let all = http(
        &server.base,
        "GET",
        "/browse/catalogs/low/packages/infinispan?resolve=1&from=all",
    );
    assert!(all.contains("id=\"resolved-catalog\">high</span>"), "{all}");
}

/// A client that never finishes its request neither holds the connection for long nor keeps
/// the command from stopping.
#[test]
fn serve_ui_stops_with_a_half_sent_request_open() {
    use std::io::{Read as _, Write as _};
    let server = Server::start(&[format!("{DATA}/catalogs/community-v4.21")]);
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stalled = TcpStream::connect(&addr).unwrap();
    stalled
        .write_all(b"GET /browse/ HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the stalled request was held {:?}",
        started.elapsed()
    );

    let mut again = TcpStream::connect(&addr).unwrap();
    again.write_all(b"GET /browse/ HTTP/1.1\r\n").unwrap();
    let mut server = server;
    let pid = server.child.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(term.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "serve-ui did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    drop(again);
}
