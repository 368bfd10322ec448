//! The catalog HTTP API: `/catalogs/{name}/api/v1/all` and `/catalogs/{name}/api/v1/metas`.
//!
//! Status codes and bodies follow catalogd (itself Go's `net/http`): plain-text errors
//! (`404 Not Found`, `400 Bad Request`, `Method Not Allowed`, `invalid catalog name: …`) ending in
//! a newline, `404 page not found` for paths outside the API, `application/jsonl` content,
//! `Last-Modified` from the content file, `If-Modified-Since`/`If-Unmodified-Since`, and byte
//! ranges on `/all`. Bodies are streamed from the file; a filtered `metas` response reads only the
//! byte sections the index selects. Responses above 1400 bytes are gzip-compressed when the client
//! accepts it (not partial ones). Every request is timed into
//! `catalogd_http_request_duration_seconds{code}`.
//!
//! Deviation: a multi-range request gets the whole file (200) instead of `multipart/byteranges`,
//! which RFC 9110 allows and no catalog client sends.
//!
//! Addition: content responses name the digest-pinned image they were unpacked from in
//! [`SOURCE_HEADER`]. Every replica serves the catalogs and polls them on its own, so right
//! after a tag moves one replica may still serve the old content while the ClusterCatalog's
//! status names the new digest; a client that caches content by that digest (olm's installer)
//! compares the two and asks again later instead of keeping the old content under the new name.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use crate::index::Section;
use crate::metrics::Metrics;
use crate::storage::{Entry, Storage};

/// The response header naming the digest-pinned image reference the served content was
/// unpacked from (what `status.resolvedSource.image.ref` says once this replica's content is
/// the status's).
pub const SOURCE_HEADER: &str = "olm-catalog-source";

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Served content.
    pub storage: Arc<Storage>,
    /// Request timing.
    pub metrics: Arc<Metrics>,
    /// Whether `/api/v1/metas` is served (on by default).
    pub metas: bool,
}

/// The router of the catalog API (mount at `/`).
pub fn router(state: AppState) -> Router {
    let mut router = Router::new().route("/catalogs/{catalog}/api/v1/all", any(all));
    if state.metas {
        router = router.route("/catalogs/{catalog}/api/v1/metas", any(metas));
    }
    let compression = tower_http::compression::CompressionLayer::new()
        .gzip(true)
        .no_br()
        .no_deflate()
        .no_zstd()
        .compress_when(compress_predicate);
    router
        .fallback(|| async { text_error(StatusCode::NOT_FOUND, "404 page not found") })
        .layer(compression)
        .layer(middleware::from_fn_with_state(state.clone(), timed))
        .with_state(state)
}

fn compress_predicate(
    status: StatusCode,
    _version: axum::http::Version,
    headers: &HeaderMap,
    _ext: &axum::http::Extensions,
) -> bool {
    if status != StatusCode::OK {
        return false;
    }
    match headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(len) => len >= 1400,
        None => true,
    }
}

/// Times every request into the metric, and logs it: at debug, or at error when the server
/// failed (a 5xx). The clock stops when the response body has been sent (or the client went
/// away), not when the headers were: a long download counts as long.
async fn timed(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut timer = Timer {
        start: Instant::now(),
        method: request.method().clone(),
        path: request.uri().path().to_owned(),
        status: None,
        metrics: state.metrics.clone(),
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    timer.status = Some(parts.status);
    Response::from_parts(
        parts,
        Body::new(TimedBody {
            inner: body,
            _timer: timer,
        }),
    )
}

/// Observes the request when dropped, that is once its body is done with.
struct Timer {
    start: Instant,
    method: Method,
    path: String,
    /// `None` until the handler answered: a request dropped before that is not counted.
    status: Option<StatusCode>,
    metrics: Arc<Metrics>,
}

impl Drop for Timer {
    fn drop(&mut self) {
        let Some(code) = self.status else { return };
        let (method, path, status, elapsed) = (
            &self.method,
            &self.path,
            code.as_u16(),
            self.start.elapsed(),
        );
        self.metrics.observe(status, elapsed);
        if code.is_server_error() {
            tracing::error!(%method, %path, status, ?elapsed, "request failed");
        } else {
            tracing::debug!(%method, %path, status, ?elapsed, "request");
        }
    }
}

/// A response body that carries its request's [`Timer`].
struct TimedBody {
    inner: Body,
    _timer: Timer,
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Go's `http.Error`: plain text, `nosniff`, message plus newline.
fn text_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

fn status_text(status: StatusCode) -> String {
    format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    )
}

/// The 400 message for a catalog name that is no DNS-1123 subdomain (so no ClusterCatalog can
/// have it), worded as upstream's handler words it; `None` for a well-formed name.
fn invalid_name_message(catalog: &str) -> Option<String> {
    let errs = olm_k8s::dns1123_subdomain_errors(catalog);
    (!errs.is_empty()).then(|| {
        let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        format!("invalid catalog name: {}", errs.join("; "))
    })
}

/// Checks method and name, and finds the content. `Err` is the response to send.
fn lookup(state: &AppState, method: &Method, catalog: &str) -> Result<Arc<Entry>, Box<Response>> {
    if method != Method::GET && method != Method::HEAD {
        return Err(Box::new(text_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed",
        )));
    }
    if let Some(message) = invalid_name_message(catalog) {
        return Err(Box::new(text_error(StatusCode::BAD_REQUEST, &message)));
    }
    state.storage.get(catalog).ok_or_else(|| {
        Box::new(text_error(
            StatusCode::NOT_FOUND,
            &status_text(StatusCode::NOT_FOUND),
        ))
    })
}

fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// Seconds since the epoch, as HTTP dates carry no more precision.
fn whole_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

enum Precondition {
    Proceed,
    NotModified,
    Failed,
}

/// RFC 7232 date preconditions as Go evaluates them without an ETag.
fn preconditions(method: &Method, headers: &HeaderMap, modified: SystemTime) -> Precondition {
    let date = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
    };
    let mtime = whole_seconds(modified);
    if headers.get(header::IF_MATCH).is_none()
        && let Some(ius) = date(header::IF_UNMODIFIED_SINCE)
        && mtime > whole_seconds(ius)
    {
        return Precondition::Failed;
    }
    if (method == Method::GET || method == Method::HEAD)
        && headers.get(header::IF_NONE_MATCH).is_none()
        && let Some(ims) = date(header::IF_MODIFIED_SINCE)
        && mtime <= whole_seconds(ims)
    {
        return Precondition::NotModified;
    }
    Precondition::Proceed
}

fn not_modified(modified: SystemTime) -> Response {
    let mut r = StatusCode::NOT_MODIFIED.into_response();
    if let Ok(v) = HeaderValue::from_str(&http_date(modified)) {
        r.headers_mut().insert(header::LAST_MODIFIED, v);
    }
    r
}

fn precondition_failed() -> Response {
    text_error(
        StatusCode::PRECONDITION_FAILED,
        &status_text(StatusCode::PRECONDITION_FAILED),
    )
}

async fn all(
    State(state): State<AppState>,
    Path(catalog): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let entry = match lookup(&state, &method, &catalog) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    let last_modified = http_date(entry.modified);
    match preconditions(&method, &headers, entry.modified) {
        Precondition::Failed => return precondition_failed(),
        Precondition::NotModified => return not_modified(entry.modified),
        Precondition::Proceed => {}
    }
    let size = entry.size;
    let mut range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(|v| parse_range(v, size));
    // `If-Range` with a date other than ours means "send everything".
    if let Some(if_range) = headers.get(header::IF_RANGE).and_then(|v| v.to_str().ok())
        && if_range != last_modified
    {
        range = None;
    }
    let (status, start, length) = match range {
        None | Some(Ok(RangeSpec::Multiple)) => (StatusCode::OK, 0, size),
        Some(Ok(RangeSpec::Single(start, length))) => (StatusCode::PARTIAL_CONTENT, start, length),
        Some(Err(message)) => {
            let mut r = text_error(StatusCode::RANGE_NOT_SATISFIABLE, message);
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return r;
        }
    };
    let mut builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/jsonl")
        .header(header::LAST_MODIFIED, last_modified)
        .header(SOURCE_HEADER, &entry.record.resolved_ref)
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CONTENT_LENGTH, length);
    if status == StatusCode::PARTIAL_CONTENT {
        builder = builder.header(
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{size}", start + length - 1),
        );
    }
    let body = if method == Method::HEAD || length == 0 {
        Body::empty()
    } else {
        file_body(
            entry.clone(),
            vec![Section {
                offset: start,
                length,
            }],
        )
    };
    builder.body(body).unwrap_or_else(|_| {
        text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &status_text(StatusCode::INTERNAL_SERVER_ERROR),
        )
    })
}

enum RangeSpec {
    Single(u64, u64),
    Multiple,
}

/// Go's `parseRange` for one `bytes=` range set; several ranges are reported as `Multiple`.
fn parse_range(value: &str, size: u64) -> Result<RangeSpec, &'static str> {
    const INVALID: &str = "invalid range";
    let spec = value.strip_prefix("bytes=").ok_or(INVALID)?;
    let mut ranges = Vec::new();
    let mut no_overlap = false;
    for part in spec.split(',') {
        let part = part.trim_matches([' ', '\t']);
        if part.is_empty() {
            continue;
        }
        let (start, end) = part.split_once('-').ok_or(INVALID)?;
        let (start, end) = (
            start.trim_matches([' ', '\t']),
            end.trim_matches([' ', '\t']),
        );
        if start.is_empty() {
            // Suffix range: the last N bytes.
            if end.is_empty() || end.starts_with('-') {
                return Err(INVALID);
            }
            let n: u64 = end.parse().map_err(|_| INVALID)?;
            if n == 0 {
                no_overlap = true;
                continue;
            }
            let n = n.min(size);
            ranges.push((size - n, n));
        } else {
            let s: u64 = start.parse().map_err(|_| INVALID)?;
            if s >= size {
                no_overlap = true;
                continue;
            }
            let length = if end.is_empty() {
                size - s
            } else {
                let e: u64 = end.parse().map_err(|_| INVALID)?;
                if s > e {
                    return Err(INVALID);
                }
                e.min(size - 1) - s + 1
            };
            ranges.push((s, length));
        }
    }
    match ranges.as_slice() {
        [] if no_overlap => Err("invalid range: failed to overlap"),
        [] => Err(INVALID),
        [(s, l)] => Ok(RangeSpec::Single(*s, *l)),
        _ => Ok(RangeSpec::Multiple),
    }
}

async fn metas(
    State(state): State<AppState>,
    Path(catalog): Path<String>,
    RawQuery(raw): RawQuery,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return text_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    if let Some(message) = invalid_name_message(&catalog) {
        return text_error(StatusCode::BAD_REQUEST, &message);
    }
    let bad_request = || {
        text_error(
            StatusCode::BAD_REQUEST,
            &status_text(StatusCode::BAD_REQUEST),
        )
    };
    // Go drops undecodable pairs from `Query()`; an unknown key is what gets a 400 there.
    // As Go's `URL.Query()`: the pairs that decode.
    let (pairs, _) = olm_goenc::url::parse_query(raw.as_deref().unwrap_or(""));
    let (mut schema, mut package, mut name) = (None, None, None);
    for (k, v) in pairs {
        let slot = match k.as_str() {
            "schema" => &mut schema,
            "package" => &mut package,
            "name" => &mut name,
            _ => return bad_request(),
        };
        // Duplicates: the first value counts.
        slot.get_or_insert(v);
    }
    let entry = match lookup(&state, &method, &catalog) {
        Ok(e) => e,
        Err(r) => return *r,
    };
    match preconditions(&method, &headers, entry.modified) {
        Precondition::Failed => return precondition_failed(),
        Precondition::NotModified => return not_modified(entry.modified),
        Precondition::Proceed => {}
    }
    let (schema, package, name) = (
        schema.unwrap_or_default(),
        package.unwrap_or_default(),
        name.unwrap_or_default(),
    );
    let sections = if schema.is_empty() && package.is_empty() && name.is_empty() {
        vec![Section {
            offset: 0,
            length: entry.size,
        }]
    } else {
        entry.index.query(&schema, &package, &name)
    };
    // The length is known before a byte is read, so GET and HEAD both announce it (a HEAD
    // answered `content-length: 0` while its GET returned the whole selection).
    let length: u64 = sections.iter().map(|s| s.length).sum();
    let builder = Response::builder()
        .status(StatusCode::OK)
        .header(header::LAST_MODIFIED, http_date(entry.modified))
        .header(SOURCE_HEADER, &entry.record.resolved_ref)
        .header(header::CONTENT_TYPE, "application/jsonl")
        .header(header::CONTENT_LENGTH, length);
    let body = if method == Method::HEAD || sections.is_empty() {
        Body::empty()
    } else {
        file_body(entry.clone(), coalesce(sections))
    };
    builder.body(body).unwrap_or_else(|_| {
        text_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &status_text(StatusCode::INTERNAL_SERVER_ERROR),
        )
    })
}

/// Merges adjacent sections so consecutive blobs are read in one go.
fn coalesce(sections: Vec<Section>) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::with_capacity(sections.len());
    for s in sections {
        match out.last_mut() {
            Some(last) if last.offset + last.length == s.offset => last.length += s.length,
            _ => out.push(s),
        }
    }
    out
}

/// How much of a catalog file one response reads at a time. Chunks are read only when the
/// connection asks for more, and it asks only while its write buffer
/// ([`olm_runtime::serve::WRITE_BUFFER`], smaller than a chunk) has room, so a response whose client
/// stopped reading holds at most two chunks of the file, whatever the catalog's size. Chunks
/// this small cost no throughput as long as they come from the page cache without a trip to the
/// blocking pool (see `read_cached`); docs/catalogd.md has the figures.
pub const CHUNK_SIZE: usize = 32 * 1024;

/// Streams the given sections of the entry's file, [`CHUNK_SIZE`] bytes at a time, each read
/// only when the connection asks for the next one. The entry is held for the whole response, so
/// a concurrent store or delete does not affect it (the open file outlives a rename or unlink).
fn file_body(entry: Arc<Entry>, sections: Vec<Section>) -> Body {
    struct Reader {
        file: Option<Arc<std::fs::File>>,
        entry: Arc<Entry>,
        sections: std::vec::IntoIter<Section>,
        current: Option<Section>,
    }
    let state = Reader {
        file: None,
        entry,
        sections: sections.into_iter(),
        current: None,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        let failed = |st: &Reader, what: &str, e: &std::io::Error| {
            tracing::warn!(path = %st.entry.path.display(), error = %e, "{what} catalog content failed; the response is cut short");
        };
        if st.current.is_none_or(|s| s.length == 0) {
            st.current = Some(st.sections.next()?);
        }
        let file = match &st.file {
            Some(file) => file.clone(),
            None => {
                let path = st.entry.path.clone();
                match blocking(move || std::fs::File::open(path)).await {
                    Ok(f) => st.file.insert(Arc::new(f)).clone(),
                    Err(e) => {
                        failed(&st, "opening", &e);
                        return Some((Err(e), st));
                    }
                }
            }
        };
        let mut cur = st.current?;
        let want = cur.length.min(CHUNK_SIZE as u64) as usize;
        let offset = cur.offset;
        let mut buf = vec![0u8; want];
        // Content being served is nearly always in the page cache: read it here then, and send
        // only a read that would wait for the disk to the blocking pool, whose round trip costs
        // more than copying a chunk. Positioned reads need no seek state.
        let read = if read_cached(&file, offset, &mut buf) {
            Ok(buf)
        } else {
            blocking(move || {
                use std::os::unix::fs::FileExt;
                file.read_exact_at(&mut buf, offset).map(|()| buf)
            })
            .await
        };
        match read {
            Ok(buf) => {
                cur.offset += want as u64;
                cur.length -= want as u64;
                st.current = Some(cur);
                Some((Ok(Bytes::from(buf)), st))
            }
            Err(e) => {
                failed(&st, "reading", &e);
                Some((Err(e), st))
            }
        }
    });
    // Fused: the gzip encoder polls once more after the end.
    Body::from_stream(futures::StreamExt::fuse(stream))
}

/// Fills `buf` from `offset` if the bytes are in the page cache, without waiting for the disk
/// (`preadv2` with `RWF_NOWAIT`); `false` when some are not, or the file system cannot tell.
#[cfg(target_os = "linux")]
fn read_cached(file: &std::fs::File, offset: u64, buf: &mut [u8]) -> bool {
    use rustix::io::{ReadWriteFlags, preadv2};
    let mut done = 0;
    while done < buf.len() {
        let mut slices = [std::io::IoSliceMut::new(&mut buf[done..])];
        match preadv2(
            file,
            &mut slices,
            offset + done as u64,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(n) if n > 0 => done += n,
            _ => return false,
        }
    }
    true
}

#[cfg(not(target_os = "linux"))]
fn read_cached(_file: &std::fs::File, _offset: u64, _buf: &mut [u8]) -> bool {
    false
}

/// Runs file I/O on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

/// `/healthz`, `/readyz` and `/metrics`.
pub fn probes_router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/healthz", any(|| async { "ok" }))
        .route("/readyz", any(|| async { "ok" }))
        .route(
            "/metrics",
            any(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        metrics.render(),
                    )
                }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_like_go() {
        let single = |v: &str| match parse_range(v, 100) {
            Ok(RangeSpec::Single(s, l)) => Some((s, l)),
            _ => None,
        };
        assert_eq!(single("bytes=0-9"), Some((0, 10)));
        assert_eq!(single("bytes=90-"), Some((90, 10)));
        assert_eq!(single("bytes=-10"), Some((90, 10)));
        assert_eq!(single("bytes=95-200"), Some((95, 5)));
        assert_eq!(single("bytes=-200"), Some((0, 100)));
        assert!(matches!(
            parse_range("bytes=0-1,5-6", 100),
            Ok(RangeSpec::Multiple)
        ));
        assert_eq!(
            parse_range("bytes=100-", 100).err(),
            Some("invalid range: failed to overlap")
        );
        assert_eq!(parse_range("bytes=5-1", 100).err(), Some("invalid range"));
        assert_eq!(parse_range("items=0-1", 100).err(), Some("invalid range"));
    }

    /// Both problems are reported, joined with "; ", when a name is too long and malformed.
    #[test]
    fn names_are_checked_like_kubernetes() {
        assert_eq!(invalid_name_message("operatorhubio"), None);
        assert_eq!(invalid_name_message("a.b-c"), None);
        let long_and_bad = format!("{}-", "a".repeat(253));
        assert_eq!(
            invalid_name_message(&long_and_bad).as_deref(),
            Some(
                "invalid catalog name: must be no more than 253 characters; a lowercase RFC 1123 \
                 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must \
                 start and end with an alphanumeric character (e.g. 'example.com', regex used for \
                 validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            )
        );
    }

    #[test]
    fn adjacent_sections_merge() {
        let s = |offset, length| Section { offset, length };
        assert_eq!(
            coalesce(vec![s(0, 5), s(5, 5), s(20, 1)]),
            vec![s(0, 10), s(20, 1)]
        );
    }
}
