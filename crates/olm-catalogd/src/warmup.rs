//! Whether this replica serves every catalog it was started with: each ClusterCatalog of the
//! first complete listing has been reconciled once (its content stored, or its failure
//! reported). A replica that becomes ready before that answers 404 for catalogs it has not
//! pulled yet, so a Service in front of several replicas sends some reads to a pod that cannot
//! answer them — during every rollout. `olm run` keeps `/readyz` failing until then.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// What is known of the first listing and which of its catalogs are still to be pulled.
#[derive(Debug, Default)]
struct State {
    listed: bool,
    pending: BTreeSet<String>,
    warm: bool,
}

/// The warm-up of one replica; tells `on_warm` once, when it is over.
pub struct Warmup {
    state: Mutex<State>,
    on_warm: Option<tokio::sync::watch::Sender<bool>>,
}

impl std::fmt::Debug for Warmup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warmup").finish_non_exhaustive()
    }
}

impl Warmup {
    /// A warm-up that reports to `on_warm` (none: nobody waits for it).
    pub fn new(on_warm: Option<tokio::sync::watch::Sender<bool>>) -> Warmup {
        Warmup {
            state: Mutex::new(State::default()),
            on_warm,
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.warm {
            return;
        }
        change(&mut state);
        if state.listed && state.pending.is_empty() {
            state.warm = true;
            if let Some(tx) = &self.on_warm {
                let _ = tx.send(true);
            }
        }
    }

    /// A catalog of the first listing.
    pub fn listed_one(&self, name: &str) {
        self.update(|s| {
            if !s.listed {
                s.pending.insert(name.to_owned());
            }
        });
    }

    /// The first listing is complete.
    pub fn listed_all(&self) {
        self.update(|s| s.listed = true);
    }

    /// `name` was reconciled (whatever the outcome) or deleted: nothing more to wait for.
    pub fn settled(&self, name: &str) {
        self.update(|s| {
            s.pending.remove(name);
        });
    }

    /// Whether the warm-up is over.
    pub fn is_warm(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).warm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_once_every_catalog_of_the_first_listing_settled() {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let w = Warmup::new(Some(tx));
        w.listed_one("a");
        w.listed_one("b");
        w.settled("a");
        assert!(!w.is_warm(), "the listing is not complete");
        w.listed_all();
        assert!(!w.is_warm(), "b is still pending");
        w.settled("b");
        assert!(w.is_warm());
        assert!(*rx.borrow());
        // Catalogs made later do not take readiness away again.
        w.listed_one("c");
        assert!(w.is_warm());
    }

    #[test]
    fn no_catalogs_is_warm_once_listed() {
        let w = Warmup::new(None);
        assert!(!w.is_warm());
        w.listed_all();
        assert!(w.is_warm());
    }

    #[test]
    fn a_catalog_settled_before_the_listing_ends_is_not_waited_for() {
        let w = Warmup::new(None);
        w.listed_one("a");
        w.settled("a");
        w.listed_all();
        assert!(w.is_warm());
    }
}
