//! Hostile HTTP clients and a latency probe, for tests that prove a server keeps answering while
//! clients try to exhaust its connections.
//!
//! [`SlowClients`] holds many connections that never complete a request (slowloris): each sends
//! part of a request head, then one more header line every [`Attack::trickle`], and reconnects as
//! soon as the server closes it. Clients come from loopback source addresses of their own
//! ([`loopback`]: all of `127.0.0.0/8` is this machine on Linux), so a server that counts
//! connections per client address tells them from the client being measured. [`measure`] asks
//! for a path on a fresh connection each time, as the kubelet's probes do, and records how long
//! each answer took.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// `127.0.0.last`: a loopback address to connect from.
pub fn loopback(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// Who attacks what.
#[derive(Debug, Clone)]
pub struct Attack {
    /// The server.
    pub target: SocketAddr,
    /// Source addresses; each opens [`Attack::per_source`] connections.
    pub sources: Vec<IpAddr>,
    /// Connections held per source address.
    pub per_source: usize,
    /// How often a connection sends one more header line.
    pub trickle: Duration,
    /// The request line and first headers sent at once (never the blank line that ends a head).
    pub head: String,
}

impl Attack {
    /// `connections` slow connections from one source address to `target`.
    pub fn one_client(target: SocketAddr, source: IpAddr, connections: usize) -> Attack {
        Attack {
            target,
            sources: vec![source],
            per_source: connections,
            trickle: Duration::from_secs(1),
            head: "GET / HTTP/1.1\r\nHost: localhost\r\n".to_owned(),
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    connects: AtomicU64,
    closed: AtomicU64,
}

/// A running [`Attack`]; dropping it without [`SlowClients::stop`] stops it too.
#[derive(Debug)]
pub struct SlowClients {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    counts: Arc<Counts>,
    /// The clients' own threads, at the lowest priority: clients on another machine do not
    /// take the server's CPU, and clients sharing its threads, or its CPU at the same priority,
    /// would delay what is measured as no remote client can.
    runtime: Option<tokio::runtime::Runtime>,
}

impl SlowClients {
    /// Starts `attack` on two threads of its own, at the lowest priority.
    ///
    /// Errors: the threads could not be started.
    pub fn start(attack: &Attack) -> std::io::Result<SlowClients> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("slow-clients")
            .on_thread_start(|| {
                // Best effort: without it the figures are only more pessimistic.
                let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
            })
            .enable_all()
            .build()?;
        let (stop, stopping) = watch::channel(false);
        let counts = Arc::new(Counts::default());
        let mut tasks = JoinSet::new();
        for &source in &attack.sources {
            for _ in 0..attack.per_source {
                tasks.spawn_on(
                    slow_client(attack.clone(), source, stopping.clone(), counts.clone()),
                    runtime.handle(),
                );
            }
        }
        Ok(SlowClients {
            stop,
            tasks,
            counts,
            runtime: Some(runtime),
        })
    }

    /// Connections opened so far.
    pub fn connects(&self) -> u64 {
        self.counts.connects.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub fn open(&self) -> u64 {
        self.connects()
            .saturating_sub(self.counts.closed.load(Ordering::Relaxed))
    }

    /// Closes every connection and waits until the clients are gone.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }
}

impl Drop for SlowClients {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        // Without blocking: this may run on an async thread.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// One slow client: connect, send part of a head, trickle header lines until the server closes
/// the connection, again.
async fn slow_client(
    attack: Attack,
    source: IpAddr,
    mut stop: watch::Receiver<bool>,
    counts: Arc<Counts>,
) {
    let mut buf = [0u8; 1024];
    while !*stop.borrow() {
        let connected = async {
            let socket = match source {
                IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            socket.bind(SocketAddr::new(source, 0))?;
            socket.connect(attack.target).await
        };
        let mut stream = tokio::select! {
            connected = connected => match connected {
                Ok(s) => s,
                Err(_) => {
                    // Out of ports or descriptors: the server is not the one to blame.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        counts.connects.fetch_add(1, Ordering::Relaxed);
        let mut sent = stream.write_all(attack.head.as_bytes()).await.is_ok();
        let mut line = 0u64;
        while sent {
            tokio::select! {
                read = stream.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                },
                () = tokio::time::sleep(attack.trickle) => {
                    line += 1;
                    sent = stream.write_all(format!("X-{line}: a\r\n").as_bytes()).await.is_ok();
                }
                _ = stop.changed() => {
                    counts.closed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        counts.closed.fetch_add(1, Ordering::Relaxed);
    }
}

/// What [`measure`] saw.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    /// How long each answered request took, in the order asked.
    pub answered: Vec<Duration>,
    /// Why the others failed (timed out, refused, not `200`).
    pub failures: Vec<String>,
}

impl Latencies {
    /// The `p`-th percentile (0–100) of the answered requests, counting failures as slower than
    /// any answer (`None` when one of them falls at `p`).
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let total = self.answered.len() + self.failures.len();
        if total == 0 {
            return None;
        }
        let mut sorted = self.answered.clone();
        sorted.sort();
        // Nearest rank.
        let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as usize;
        sorted.get(rank - 1).copied()
    }

    /// `Ok` when every request was answered and the 99th percentile is below `p99`; else why
    /// not.
    pub fn within(&self, p99: Duration) -> Result<(), String> {
        if !self.failures.is_empty() {
            return Err(format!(
                "{} of {} failed: {:?}",
                self.failures.len(),
                self.answered.len() + self.failures.len(),
                &self.failures[..self.failures.len().min(5)]
            ));
        }
        match self.percentile(99.0) {
            Some(seen) if seen < p99 => Ok(()),
            _ => Err(format!("p99 not under {p99:?}: {}", self.summary())),
        }
    }

    /// `n answered, p50 …, p99 …, max …, k failed`.
    pub fn summary(&self) -> String {
        let ms = |d: Option<Duration>| {
            d.map_or_else(
                || "-".to_owned(),
                |d| format!("{:.1} ms", d.as_secs_f64() * 1e3),
            )
        };
        format!(
            "{} answered, p50 {}, p99 {}, max {}, {} failed",
            self.answered.len(),
            ms(self.percentile(50.0)),
            ms(self.percentile(99.0)),
            ms(self.answered.iter().max().copied()),
            self.failures.len()
        )
    }
}

/// The kubelet's default probe timeout: how long [`measure_side_by_side`] waits for an answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// [`measure`]s `count` requests to each of `targets` (address, path) side by side, 20 ms
/// apart, each within [`PROBE_TIMEOUT`]; what each saw, in the order of `targets`.
pub async fn measure_side_by_side(targets: &[(SocketAddr, &str)], count: usize) -> Vec<Latencies> {
    let running: Vec<_> = targets
        .iter()
        .map(|&(target, path)| {
            let path = path.to_owned();
            tokio::spawn(async move {
                measure(
                    target,
                    &path,
                    count,
                    Duration::from_millis(20),
                    PROBE_TIMEOUT,
                )
                .await
            })
        })
        .collect();
    let mut seen = Vec::with_capacity(running.len());
    for task in running {
        seen.push(task.await.unwrap_or_else(|e| Latencies {
            answered: Vec::new(),
            failures: vec![format!("the measuring task failed: {e}")],
        }));
    }
    seen
}

/// What [`expect_fast`] asks for: a name for reports, an address and a path.
pub type Target<'a> = (&'a str, SocketAddr, &'a str);

/// [`measure_side_by_side`]s `count` requests to each of `targets` and prints what each saw,
/// under `phase`; `Err` names each target not answered every time with a 99th percentile under
/// `p99`.
pub async fn expect_fast(
    phase: &str,
    targets: &[Target<'_>],
    count: usize,
    p99: Duration,
) -> Result<(), String> {
    let addresses: Vec<(SocketAddr, &str)> = targets.iter().map(|&(_, a, p)| (a, p)).collect();
    let seen = measure_side_by_side(&addresses, count).await;
    let mut slow = Vec::new();
    for ((name, _, _), seen) in targets.iter().zip(&seen) {
        println!("{phase}: {name} {}", seen.summary());
        if let Err(e) = seen.within(p99) {
            slow.push(format!("{phase}: {name}: {e}"));
        }
    }
    match slow.is_empty() {
        true => Ok(()),
        false => Err(slow.join("\n")),
    }
}

/// Runs `attacks` while `work` runs, `settle` after they started (for their connections to be
/// made); returns what `work` returned and a line saying how many slow connections were open and
/// how many were made while it ran.
///
/// Errors: the slow clients could not be started.
pub async fn during<T>(
    attacks: &[Attack],
    settle: Duration,
    work: impl std::future::Future<Output = T>,
) -> std::io::Result<(T, String)> {
    let mut running = Vec::with_capacity(attacks.len());
    for attack in attacks {
        running.push(SlowClients::start(attack)?);
    }
    tokio::time::sleep(settle).await;
    let connects = |running: &[SlowClients]| running.iter().map(SlowClients::connects).sum::<u64>();
    let before = connects(&running);
    let done = work.await;
    let open: Vec<String> = running.iter().map(|c| c.open().to_string()).collect();
    let note = format!(
        "slow connections open {}, {} made meanwhile",
        open.join(" + "),
        connects(&running) - before
    );
    for clients in running {
        clients.stop().await;
    }
    Ok((done, note))
}

/// Asks `count` times for `path` on `target`, each on a new connection from `127.0.0.1` that
/// closes after the answer, `gap` apart; an answer counts when it is a `200` read to its end
/// within `timeout` of connecting.
pub async fn measure(
    target: SocketAddr,
    path: &str,
    count: usize,
    gap: Duration,
    timeout: Duration,
) -> Latencies {
    let mut seen = Latencies::default();
    for _ in 0..count {
        let started = Instant::now();
        match tokio::time::timeout(timeout, get(target, path)).await {
            Ok(Ok(status)) if status.contains(" 200 ") => seen.answered.push(started.elapsed()),
            Ok(Ok(status)) => seen.failures.push(status),
            Ok(Err(e)) => seen.failures.push(e.to_string()),
            Err(_) => seen.failures.push(format!("no answer within {timeout:?}")),
        }
        tokio::time::sleep(gap).await;
    }
    seen
}

/// `GET path` with `Connection: close`; the status line once the answer is read to its end.
async fn get(target: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(target).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let status = answer
        .split(|&b| b == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).trim_end().to_owned())
        .unwrap_or_default();
    if status.is_empty() {
        return Err(std::io::Error::other("closed without an answer"));
    }
    Ok(status)
}

/// Raises this process's open-file limit to its hard limit when it is below `needed` (each end
/// of a loopback connection is a descriptor of the test process when the server runs in it).
/// Errors when the hard limit is below `needed`.
pub fn raise_open_files(needed: u64) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|c| c < needed) {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        setrlimit(Resource::Nofile, raised)
            .map_err(|e| format!("raising the open-file limit: {e}"))?;
    }
    let now = getrlimit(Resource::Nofile).current;
    if now.is_some_and(|c| c < needed) {
        return Err(format!(
            "{needed} open files are needed; the hard limit is {now:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_as_slowest() {
        let ms = Duration::from_millis;
        let seen = Latencies {
            answered: (1..=98).map(ms).collect(),
            failures: vec!["no answer".into(), "no answer".into()],
        };
        assert_eq!(seen.percentile(50.0), Some(ms(50)));
        assert_eq!(seen.percentile(98.0), Some(ms(98)));
        assert_eq!(seen.percentile(99.0), None);
        let all = Latencies {
            answered: (1..=100).map(ms).collect(),
            failures: Vec::new(),
        };
        assert_eq!(all.percentile(99.0), Some(ms(99)));
        assert!(
            all.summary()
                .starts_with("100 answered, p50 50.0 ms, p99 99.0 ms")
        );
    }
}
