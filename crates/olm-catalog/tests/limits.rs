//! What the loader refuses instead of reading without end: entries that are not regular files
//! (named pipes, sockets, devices, links to them), and documents nested deeper than Go's decoders
//! read (10,000 levels), in every format. Every load here runs under a deadline, so a regression
//! fails the test instead of hanging the suite.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use olm_catalog::{Catalog, LoadError, load_bytes, load_file, load_jsonl, load_path};

const PKG: &str = "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n";
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `f` on its own thread and fails the test if it has not returned by the deadline (a load
/// blocked on a pipe never would).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what}: still running after {DEADLINE:?}"))
}

fn load_dir(d: &Path) -> Result<Catalog, LoadError> {
    let d = d.to_path_buf();
    within("loading a catalog directory", move || load_path(&d))
}

fn catalog_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("catalog.yaml"), PKG).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", p.display());
}

/// The path and message of an I/O error.
fn io_err(r: Result<Catalog, LoadError>) -> (String, String) {
    match r {
        Err(LoadError::Io { path, message }) => (path, message),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

// ---- entries that are not regular files -----------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_link_to_dev_zero_is_refused_before_reading() {
    let d = catalog_dir();
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert_eq!(PathBuf::from(&path), d.path().join("zero"));
    assert_eq!(
        message,
        r#"links to "/dev/zero", a character device, not a regular file: list it in .indexignore to leave it out"#
    );
}

#[cfg(unix)]
#[test]
fn a_named_pipe_is_refused_not_waited_on() {
    let d = catalog_dir();
    fs::create_dir(d.path().join("sub")).unwrap();
    mkfifo(&d.path().join("sub/pipe.yaml"));
    let (path, message) = io_err(load_dir(d.path()));
    assert_eq!(PathBuf::from(&path), d.path().join("sub/pipe.yaml"));
    assert_eq!(
        message,
        "is a named pipe, not a regular file: list it in .indexignore to leave it out"
    );
}

#[cfg(unix)]
#[test]
fn a_link_to_a_named_pipe_is_refused() {
    let d = catalog_dir();
    mkfifo(&d.path().join("pipe"));
    fs::create_dir(d.path().join("z")).unwrap();
    std::os::unix::fs::symlink("../pipe", d.path().join("z/link")).unwrap();
    // The pipe itself comes first in walk order; ignore it to reach the link.
    fs::write(d.path().join(".indexignore"), "/pipe\n").unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert!(path.ends_with("z/link"), "{path}");
    assert!(
        message.starts_with(r#"links to "../pipe", a named pipe, not a regular file"#),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_socket_is_refused() {
    let d = catalog_dir();
    let _listener = std::os::unix::net::UnixListener::bind(d.path().join("sock")).unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert!(path.ends_with("sock"), "{path}");
    assert!(
        message.starts_with("is a socket, not a regular file"),
        "{message}"
    );
}

/// The first entry in walk order that is not a regular file is the one reported, even when a
/// file before it would fail to parse: no file is read from a tree that holds one.
#[cfg(unix)]
#[test]
fn special_files_are_found_before_any_file_is_parsed() {
    let d = catalog_dir();
    fs::write(d.path().join("a-broken.yaml"), "schema: [\n").unwrap();
    mkfifo(&d.path().join("b-pipe"));
    let (path, _) = io_err(load_dir(d.path()));
    assert!(path.ends_with("b-pipe"), "{path}");
}

#[cfg(unix)]
#[test]
fn special_files_listed_in_indexignore_are_never_opened() {
    let d = catalog_dir();
    mkfifo(&d.path().join("pipe"));
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
    fs::write(d.path().join(".indexignore"), "pipe\nzero\n").unwrap();
    assert_eq!(load_dir(d.path()).unwrap().blobs.len(), 1);
}

#[cfg(unix)]
#[test]
fn a_link_to_a_regular_file_is_still_read() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("real.yaml.txt"), PKG).unwrap();
    fs::write(d.path().join(".indexignore"), "*.txt\n").unwrap();
    std::os::unix::fs::symlink("real.yaml.txt", d.path().join("link.yaml")).unwrap();
    assert_eq!(load_dir(d.path()).unwrap().blobs.len(), 1);
}

/// `olm catalog validate /dev`: a tree of devices, pipes and links into /proc fails at once.
#[cfg(target_os = "linux")]
#[test]
fn dev_as_a_catalog_is_refused_at_once() {
    if !Path::new("/dev/null").exists() {
        return;
    }
    let (path, message) = io_err(load_dir(Path::new("/dev")));
    assert!(path.starts_with("/dev/"), "{path}");
    assert!(message.contains(", not a regular file"), "{message}");
}

#[cfg(unix)]
#[test]
fn a_named_pipe_given_as_the_catalog_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let pipe = d.path().join("pipe");
    mkfifo(&pipe);
    let p = pipe.clone();
    let (_, message) = io_err(within("load_path", move || load_path(&p)));
    assert_eq!(
        message,
        "is a named pipe, not a regular file or a directory"
    );
    let (path, message) = io_err(within("load_file", move || load_file(&pipe)));
    assert!(path.ends_with("pipe"), "{path}");
    assert!(
        message.starts_with("is a named pipe, not a regular file"),
        "{message}"
    );
}

// ---- nesting --------------------------------------------------------------------------------------

/// The deepest document Go's decoders read: the top-level object and 9,999 arrays inside it.
const MAX: usize = 10_000;
const TOO_DEEP: &str = "exceeded max depth of 10000";

/// A JSON document `depth` collections deep (the object counts), on one line.
fn json_arrays(depth: usize) -> String {
    let n = depth - 1;
    format!(
        "{{\"schema\":\"custom\",\"name\":\"deep\",\"value\":{}1{}}}",
        "[".repeat(n),
        "]".repeat(n)
    )
}

/// The same nesting of objects: `{"a":{"a":…}}`.
fn json_objects(depth: usize) -> String {
    let n = depth - 1;
    format!(
        "{{\"schema\":\"custom\",\"name\":\"deep\",\"value\":{}1{}}}",
        "{\"a\":".repeat(n),
        "}".repeat(n)
    )
}

/// YAML flow collections: `value: [[[…]]]`.
fn yaml_flow(depth: usize) -> String {
    let n = depth - 1;
    format!(
        "schema: custom\nname: deep\nvalue: {}1{}\n",
        "[".repeat(n),
        "]".repeat(n)
    )
}

/// YAML block sequences in compact form (`- - - 1`), each `- ` one level deeper.
fn yaml_block(depth: usize) -> String {
    let n = depth - 1;
    format!("schema: custom\nname: deep\nvalue:\n{}1\n", "- ".repeat(n))
}

/// An anchored deep value and an alias to it: both are copied into the document.
fn yaml_alias(depth: usize) -> String {
    let n = depth - 1;
    format!(
        "schema: custom\nname: deep\nvalue: &v {}1{}\ncopy: *v\n",
        "[".repeat(n),
        "]".repeat(n)
    )
}

/// The canonical JSON the loader must keep for a document built by `json_arrays`.
fn canonical_arrays(depth: usize) -> String {
    let n = depth - 1;
    format!(
        "{{\"name\":\"deep\",\"schema\":\"custom\",\"value\":{}1{}}}",
        "[".repeat(n),
        "]".repeat(n)
    )
}

/// Loads `text` as the one file `name` of a catalog directory (so on the loader's worker threads).
fn load_as(name: &str, text: String) -> Result<Catalog, LoadError> {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(name), text).unwrap();
    let r = load_dir(d.path());
    drop(d);
    r
}

fn parse_err(r: Result<Catalog, LoadError>) -> (String, usize, String) {
    match r {
        Err(LoadError::Parse {
            path,
            line,
            message,
        }) => (path, line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// Equality of texts too long to print in full.
fn same(got: &str, want: &str) {
    if got != want {
        let at = got
            .bytes()
            .zip(want.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        panic!(
            "texts differ at byte {at} (lengths {} and {}): {:?} vs {:?}",
            got.len(),
            want.len(),
            &got[at.saturating_sub(20)..(at + 20).min(got.len())],
            &want[at.saturating_sub(20)..(at + 20).min(want.len())]
        );
    }
}

fn only_raw(c: &Catalog) -> String {
    assert_eq!(c.blobs.len(), 1);
    c.blobs[0].raw().unwrap().get().to_owned()
}

#[test]
fn json_reads_as_deep_as_go_and_names_the_limit_beyond() {
    let c = load_as("deep.json", json_arrays(MAX)).unwrap();
    same(&only_raw(&c), &canonical_arrays(MAX));
    load_as("deep.json", json_objects(MAX)).unwrap();

    let (path, line, message) = parse_err(load_as("deep.json", json_arrays(MAX + 1)));
    assert!(path.ends_with("deep.json"), "{path}");
    assert_eq!((line, message.as_str()), (1, TOO_DEEP));
    let (_, _, message) = parse_err(load_as("deep.json", json_objects(MAX + 1)));
    assert_eq!(message, TOO_DEEP);
}

/// A later document of a stream names its own line.
#[test]
fn json_stream_names_the_line_of_the_deep_document() {
    let text = format!("{}\n\n{}\n", json_arrays(3), json_arrays(MAX + 1));
    let (_, line, message) = parse_err(load_as("s.json", text));
    assert_eq!((line, message.as_str()), (3, TOO_DEEP));
}

#[test]
fn yaml_reads_as_deep_as_go_and_names_the_limit_beyond() {
    for (name, doc) in [
        ("flow.yaml", yaml_flow as fn(usize) -> String),
        ("block.yml", yaml_block),
        ("alias.yaml", yaml_alias),
    ] {
        let c = load_as(name, doc(MAX)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.blobs.len(), 1, "{name}");
        let (path, line, message) = parse_err(load_as(name, doc(MAX + 1)));
        assert!(path.ends_with(name), "{path}");
        assert_eq!(message, TOO_DEEP, "{name}");
        assert_eq!(line, if name == "block.yml" { 4 } else { 3 }, "{name}");
    }
    // The same value whichever way it is written.
    let flow = load_as("f.yaml", yaml_flow(MAX)).unwrap();
    same(&only_raw(&flow), &canonical_arrays(MAX));
    let block = load_as("b.yaml", yaml_block(MAX)).unwrap();
    same(&only_raw(&block), &canonical_arrays(MAX));
}

/// Block and flow nesting count together.
#[test]
fn yaml_block_and_flow_nesting_share_the_limit() {
    let half = MAX / 2;
    let doc = |flow: usize| {
        format!(
            "schema: custom\nname: deep\nvalue:\n{}{}1{}\n",
            "- ".repeat(half - 1),
            "[".repeat(flow),
            "]".repeat(flow)
        )
    };
    load_as("mixed.yaml", doc(half)).unwrap();
    let (_, _, message) = parse_err(load_as("mixed.yaml", doc(half + 1)));
    assert_eq!(message, TOO_DEEP);
}

#[test]
fn jsonl_reads_as_deep_as_go_and_names_the_limit_beyond() {
    let text = format!("{}\n{}\n", json_arrays(MAX), json_objects(MAX));
    let c = within("load_jsonl", move || load_jsonl(text.as_bytes(), "c.jsonl")).unwrap();
    assert_eq!(c.blobs.len(), 2);
    // Lines are kept verbatim.
    same(c.blobs[0].raw().unwrap().get(), &json_arrays(MAX));

    for deep in [json_arrays(MAX + 1), json_objects(MAX + 1)] {
        let text = format!("{}\n\n{deep}\n", json_arrays(2));
        let (path, line, message) = parse_err(within("load_jsonl", move || {
            load_jsonl(text.as_bytes(), "c.jsonl")
        }));
        assert_eq!(
            (path.as_str(), line, message.as_str()),
            ("c.jsonl", 3, TOO_DEEP)
        );
    }
    // Brackets inside strings are not nesting.
    let text = format!(
        "{{\"schema\":\"custom\",\"name\":\"s\",\"value\":\"{}\\\"{}\"}}\n",
        "[".repeat(2 * MAX),
        "{".repeat(2 * MAX)
    );
    within("load_jsonl", move || load_jsonl(text.as_bytes(), "c.jsonl")).unwrap();
    // A `.jsonl` file inside a catalog directory is a JSON stream, under the same limit.
    load_as("catalog.jsonl", json_arrays(MAX)).unwrap();
    let (_, _, message) = parse_err(load_as("catalog.jsonl", json_arrays(MAX + 1)));
    assert_eq!(message, TOO_DEEP);
}

/// An error at the bottom of a deep document behind a large prefix is found in one pass: a
/// recursive parser that works out the error's line again at every level it unwinds would take
/// minutes here.
#[test]
fn errors_deep_in_a_large_document_cost_one_pass() {
    let pad = "x".repeat(2 << 20);
    let n = MAX - 2;
    for (inner, want) in [
        (r#"{"k":1,"j":2,"k":3}"#, r#"duplicate key "k""#),
        ("1e400", "number out of range"),
        (
            "[1,]",
            "invalid character ']' looking for beginning of value",
        ),
        (
            r#"{"a":1,}"#,
            "invalid character '}' looking for beginning of object key string",
        ),
        ("[1 2]", "invalid character '2' after array element"),
    ] {
        // Third in the stream: opm's decoder reads a broken first or second JSON document
        // again as YAML, which would take a trailing comma.
        let text = format!(
            "{{\"schema\":\"custom\",\"name\":\"a\"}}\n{{\"schema\":\"custom\",\"name\":\"b\"}}\n{{\"pad\":\"{pad}\",\"schema\":\"custom\",\"name\":\"deep\",\"value\":\n{}{inner}{}}}\n",
            "[".repeat(n),
            "]".repeat(n)
        );
        let (_, line, message) = parse_err(load_as("big.json", text));
        assert_eq!((line, message.as_str()), (4, want));
    }
}

/// However small the caller's stack: nothing in the loader recurses per level.
#[test]
fn deep_documents_load_on_a_small_stack() {
    let run = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            for (name, text) in [
                ("a.json", json_arrays(MAX)),
                ("a.json", json_objects(MAX)),
                ("a.yaml", yaml_flow(MAX)),
                ("a.yaml", yaml_block(MAX)),
                ("a.yaml", yaml_alias(MAX)),
            ] {
                load_bytes(text.as_bytes(), name).unwrap_or_else(|e| panic!("{name}: {e}"));
                let e = load_bytes(text.replacen("1", "[1]", 1).as_bytes(), name);
                assert!(e.is_err(), "{name}");
            }
            load_jsonl(json_arrays(MAX).as_bytes(), "a.jsonl").unwrap();
        })
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run.join());
    });
    rx.recv_timeout(DEADLINE)
        .expect("loading on a small stack finished")
        .expect("loading on a small stack did not panic");
}

/// A bundle property may nest as deep as any document, and validation copes.
#[test]
fn deep_property_values_load_and_validate() {
    let n = MAX - 3; // the blob, `properties`, the property object
    let value = format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let text = format!(
        "{{\"schema\":\"olm.package\",\"name\":\"foo\",\"defaultChannel\":\"stable\"}}\n\
         {{\"schema\":\"olm.channel\",\"package\":\"foo\",\"name\":\"stable\",\"entries\":[{{\"name\":\"foo.v1.0.0\"}}]}}\n\
         {{\"schema\":\"olm.bundle\",\"package\":\"foo\",\"name\":\"foo.v1.0.0\",\"image\":\"quay.io/foo:1\",\
         \"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"foo\",\"version\":\"1.0.0\"}}}},\
         {{\"type\":\"example.deep\",\"value\":{value}}}]}}\n"
    );
    let c = load_as("catalog.json", text.clone()).unwrap();
    within("validate", move || olm_catalog::validate(&c)).unwrap();
    let deeper = text.replacen("[1]", "[[1]]", 1);
    let (_, line, message) = parse_err(load_as("catalog.json", deeper));
    assert_eq!((line, message.as_str()), (3, TOO_DEEP));
}

/// A catalog at the limit writes back as JSONL unchanged; the YAML writer, which recurses, refuses
/// it with an error instead of overflowing its stack.
#[test]
fn deep_catalogs_write_back_as_jsonl_and_refuse_yaml() {
    use olm_catalog::write::{Format, to_string, write};
    let c = load_as("deep.json", json_arrays(MAX)).unwrap();
    same(
        to_string(&c, Format::Jsonl).trim_end(),
        &canonical_arrays(MAX),
    );
    let e = within("writing YAML", move || {
        write(&c, Format::Yaml, &mut Vec::new())
    })
    .unwrap_err();
    assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
}
