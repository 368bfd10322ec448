//! `catalogd_http_request_duration_seconds{code}`: the one metric catalogd adds, with its buckets,
//! rendered in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// The metric name.
pub const REQUEST_DURATION: &str = "catalogd_http_request_duration_seconds";

/// Upstream's buckets: every 100 ms to 1 s, their multiples by 4, and 10 s.
pub const BUCKETS: [f64; 19] = [
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 10.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Request durations by status code.
#[derive(Debug, Default)]
pub struct Metrics {
    by_code: Mutex<BTreeMap<u16, Histogram>>,
}

impl Metrics {
    /// Records one request.
    pub fn observe(&self, code: u16, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let mut map = self.by_code.lock().unwrap_or_else(|e| e.into_inner());
        let h = map.entry(code).or_default();
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let map = self
            .by_code
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP {REQUEST_DURATION} Histogram of request duration in seconds"
        );
        let _ = writeln!(out, "# TYPE {REQUEST_DURATION} histogram");
        for (code, h) in &map {
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{REQUEST_DURATION}_bucket{{code=\"{code}\",le=\"{le}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "{REQUEST_DURATION}_bucket{{code=\"{code}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "{REQUEST_DURATION}_sum{{code=\"{code}\"}} {}", h.sum);
            let _ = writeln!(
                out,
                "{REQUEST_DURATION}_count{{code=\"{code}\"}} {}",
                h.count
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative() {
        let m = Metrics::default();
        m.observe(200, Duration::from_millis(150));
        m.observe(200, Duration::from_secs(20));
        let text = m.render();
        assert!(
            text.contains(
                "catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"0.1\"} 0"
            )
        );
        assert!(
            text.contains(
                "catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"0.2\"} 1"
            )
        );
        assert!(
            text.contains(
                "catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"10\"} 1"
            )
        );
        assert!(
            text.contains(
                "catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"+Inf\"} 2"
            )
        );
        assert!(text.contains("catalogd_http_request_duration_seconds_count{code=\"200\"} 2"));
    }
}
