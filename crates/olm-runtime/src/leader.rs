//! Leader election for `olm run --leader-elect`: the shell around [`decide`], reading and writing
//! one Lease in the system namespace.
//!
//! Only the leader runs the ClusterExtension, ClusterObjectSet and certificate controllers and
//! writes ClusterCatalog status. Every replica pulls and serves catalog content, so a request
//! that reaches a replica that is not leading is answered like any other (upstream's non-leader
//! catalogd replicas answer 404). A leader that cannot renew the lease for the renew deadline
//! stops the process, as controller-runtime does: it cannot know whether another has taken over,
//! and a restart is the safe way back to candidacy. On a graceful stop the lease is released, so
//! the next leader starts at its next try rather than after the lease duration.

pub mod decide;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tracing::{info, warn};

use self::decide::{Record, Step, Timings};

/// The Lease `olm run` holds: operator-controller's lock name, since one `olm run` does what
/// operator-controller and catalogd do together.
pub const LEASE_NAME: &str = "9c4404e7.operatorframework.io";

/// Who elects, and how.
#[derive(Clone, Debug)]
pub struct Election {
    /// Namespace of the Lease (the system namespace).
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This process's identity, unique among replicas.
    pub identity: String,
    /// Lease duration, renew deadline, retry period.
    pub timings: Timings,
}

impl Election {
    /// An election for the Lease `lease` in `namespace` ([`LEASE_NAME`] unless the process runs
    /// one of upstream's components alone), as `hostname_suffix` (client-go uses the hostname,
    /// which is the pod name, and a random suffix).
    pub fn new(namespace: &str, lease: &str, timings: Timings) -> Election {
        let host = hostname();
        let nanos = clock_nanos();
        Election {
            namespace: namespace.to_owned(),
            name: lease.to_owned(),
            identity: format!("{host}_{:08x}{:08x}", std::process::id(), nanos),
            timings,
        }
    }
}

/// This host's name: in a pod, the pod's name (as the kubelet sets it, up to 63 characters);
/// `olm` when it cannot be read.
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "olm".to_owned())
}

/// Why leading ended other than by a stop.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// No renew succeeded for the renew deadline, or another took the lease.
    #[error("lost the leader lease {namespace}/{name}: {why}")]
    Lost {
        /// Namespace of the Lease.
        namespace: String,
        /// Its name.
        name: String,
        /// What happened.
        why: String,
    },
}

/// Takes part in the election until `stop` resolves, telling `leading` whenever this process
/// starts leading. Returns an error when leadership is lost; on a stop, releases the lease if
/// held.
pub async fn run(
    client: Client,
    election: Election,
    leading: watch::Sender<bool>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), LeaderError> {
    let api: Api<Lease> = Api::namespaced(client, &election.namespace);
    let timings = election.timings;
    let mut observed: Option<(String, jiff::Timestamp)> = None;
    let mut renewed: Option<jiff::Timestamp> = None;
    let lost = |why: String| LeaderError::Lost {
        namespace: election.namespace.clone(),
        name: election.name.clone(),
        why,
    };
    tokio::pin!(stop);
    info!(lease = %election.name, identity = %election.identity, "waiting for the leader lease");
    loop {
        let now = jiff::Timestamp::now();
        match try_once(&api, &election, &mut observed, now).await {
            Ok(Held::Ours) => {
                renewed = Some(now);
                if !*leading.borrow() {
                    info!(lease = %election.name, identity = %election.identity, "started leading");
                    leading.send_replace(true);
                }
            }
            Ok(Held::By(holder)) => {
                if *leading.borrow() {
                    return Err(lost(format!("now held by {holder}")));
                }
            }
            // Someone wrote the lease between our read and write: try again at the next
            // period; a leader keeps leading until its renew deadline, as client-go's does.
            Ok(Held::Contended) => {}
            Err(e) => {
                warn!(lease = %election.name, error = %e, "leader election: reading or writing the lease failed; trying again")
            }
        }
        if *leading.borrow()
            && let Some(at) = renewed
            && !decide::still_leading(at, jiff::Timestamp::now(), &timings)
        {
            return Err(lost(format!(
                "not renewed for {:?} (the renew deadline)",
                timings.renew_deadline
            )));
        }
        let wait = if *leading.borrow() {
            timings.retry_period
        } else {
            jittered(timings.retry_period)
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = &mut stop => {
                if *leading.borrow() {
                    release(&api, &election).await;
                }
                return Ok(());
            }
        }
    }
}

/// Who holds the lease after one try.
enum Held {
    Ours,
    By(String),
    /// Our write lost a race (the lease changed since it was read): unknown until the next try.
    Contended,
}

/// One read and, when the decision says so, one conditional write.
async fn try_once(
    api: &Api<Lease>,
    election: &Election,
    observed: &mut Option<(String, jiff::Timestamp)>,
    now: jiff::Timestamp,
) -> Result<Held, kube::Error> {
    let lease = api.get_opt(&election.name).await?;
    let version = lease
        .as_ref()
        .and_then(|l| l.metadata.resource_version.clone())
        .unwrap_or_default();
    // The time this record was first seen: a changed version restarts the count.
    let seen_at = match observed {
        Some((v, at)) if *v == version => *at,
        _ => {
            *observed = Some((version.clone(), now));
            now
        }
    };
    let record = lease.as_ref().map(record_of);
    let step = decide::next(
        record.as_ref(),
        seen_at,
        &election.identity,
        now,
        &election.timings,
    );
    let written = match step {
        Step::Wait { holder } => return Ok(Held::By(holder)),
        Step::Create(r) => {
            api.create(&PostParams::default(), &lease_of(election, &r, None))
                .await
        }
        Step::Update(r) => {
            api.replace(
                &election.name,
                &PostParams::default(),
                &lease_of(election, &r, Some(version)),
            )
            .await
        }
    };
    match written {
        Ok(_) => Ok(Held::Ours),
        // Another wrote first (create, or the conditional replace).
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(Held::Contended),
        Err(e) => Err(e),
    }
}

/// Gives the lease up on a graceful stop, if still ours.
async fn release(api: &Api<Lease>, election: &Election) {
    let result = async {
        let Some(lease) = api.get_opt(&election.name).await? else {
            return Ok(());
        };
        let record = record_of(&lease);
        if record.holder != election.identity {
            return Ok(());
        }
        let released = decide::released(&record, jiff::Timestamp::now());
        api.replace(
            &election.name,
            &PostParams::default(),
            &lease_of(election, &released, lease.metadata.resource_version.clone()),
        )
        .await
        .map(drop)
    }
    .await;
    match result {
        Ok(()) => info!(lease = %election.name, "released the leader lease"),
        Err(e) => {
            warn!(lease = %election.name, error = %e, "releasing the leader lease failed; another replica takes over when it expires")
        }
    }
}

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time: spec.acquire_time.map(|t| t.0),
        renew_time: spec.renew_time.map(|t| t.0),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

fn lease_of(election: &Election, r: &Record, resource_version: Option<String>) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(election.name.clone()),
            namespace: Some(election.namespace.clone()),
            resource_version,
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(r.holder.clone()),
            lease_duration_seconds: Some(r.lease_duration_seconds),
            acquire_time: r.acquire_time.map(MicroTime),
            renew_time: r.renew_time.map(MicroTime),
            lease_transitions: Some(r.transitions),
            ..LeaseSpec::default()
        }),
    }
}

/// client-go's `wait.Jitter(retryPeriod, 1.2)`: up to 20% more, so candidates do not all try at
/// once. The spread comes from the clock's nanoseconds; it need not be random, only spread.
fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + 0.2 * f64::from(clock_nanos()) / 1e9)
}

/// The nanoseconds of the wall clock's current second: spread enough to tell processes started
/// together apart and to stagger their tries.
fn clock_nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}
