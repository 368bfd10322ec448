//! What a controller last wrote to each object's status.
//!
//! A reconcile reads its object from the watch cache, and the cache can lag behind the
//! controller's own write: an event that was already queued (a finalizer added, an owned
//! object changing) runs the next reconcile on the object as it was *before* the status the
//! previous reconcile wrote. Comparing the desired status with that stale copy would write the
//! same status again. Remembering the last write, with the resourceVersion the API server
//! returned for it, tells a stale copy (older than the write) from a status someone changed
//! since (newer): a stale copy is replaced by the status written, so the same status is not
//! written twice and condition transition times stay those of the first write, while a status
//! someone changed since is still put right.

use std::collections::HashMap;
use std::sync::Mutex;

/// The last status written per object, keyed by name.
pub struct Written<S> {
    entries: Mutex<HashMap<String, Entry<S>>>,
}

struct Entry<S> {
    uid: String,
    resource_version: u64,
    status: S,
}

impl<S> Default for Written<S> {
    fn default() -> Self {
        Written {
            entries: Mutex::default(),
        }
    }
}

impl<S: Clone> Written<S> {
    /// The status last written to `name` when the observed copy (`uid`, `resource_version`)
    /// predates that write: the status the object really has, to start from instead of the
    /// copy's. `None` when the copy is current (or newer, or unknown).
    pub fn newer_than(
        &self,
        name: &str,
        uid: Option<&str>,
        resource_version: Option<&str>,
    ) -> Option<S> {
        let entries = lock(&self.entries);
        let entry = entries.get(name)?;
        (entry.uid == uid.unwrap_or_default() && predates(resource_version, entry.resource_version))
            .then(|| entry.status.clone())
    }

    /// Records a write the API server answered with `resource_version`.
    pub fn record(&self, name: &str, uid: Option<&str>, resource_version: Option<&str>, status: S) {
        let Some(resource_version) = resource_version.and_then(|rv| rv.parse().ok()) else {
            // Without a comparable version no later copy can be told stale: forget instead.
            self.forget(name);
            return;
        };
        lock(&self.entries).insert(
            name.to_owned(),
            Entry {
                uid: uid.unwrap_or_default().to_owned(),
                resource_version,
                status,
            },
        );
    }

    /// Drops what was recorded for `name` (the object is gone).
    pub fn forget(&self, name: &str) {
        lock(&self.entries).remove(name);
    }
}

/// Whether an observed resourceVersion is older than the written one. resourceVersions are
/// etcd revisions (decimal integers) on every API server this runs against; one that does not
/// parse is never called older, so the status is written.
fn predates(observed: Option<&str>, written: u64) -> bool {
    observed
        .and_then(|rv| rv.parse::<u64>().ok())
        .is_some_and(|rv| rv < written)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_older_than_the_write_yields_the_written_status() {
        let w = Written::default();
        w.record("a", Some("u1"), Some("120"), "Installed");
        assert_eq!(
            w.newer_than("a", Some("u1"), Some("100")),
            Some("Installed")
        );
        // The cache caught up, or someone wrote since: the copy is what counts.
        assert_eq!(w.newer_than("a", Some("u1"), Some("120")), None);
        assert_eq!(w.newer_than("a", Some("u1"), Some("130")), None);
        // Another object of the same name, an unknown version, another name.
        assert_eq!(w.newer_than("a", Some("u2"), Some("100")), None);
        assert_eq!(w.newer_than("a", Some("u1"), Some("x")), None);
        assert_eq!(w.newer_than("a", Some("u1"), None), None);
        assert_eq!(w.newer_than("b", Some("u1"), Some("100")), None);
    }

    #[test]
    fn an_unparsable_written_version_or_a_forgotten_object_records_nothing() {
        let w = Written::default();
        w.record("a", Some("u1"), Some("120"), 1);
        w.record("a", Some("u1"), Some("opaque"), 1);
        assert_eq!(w.newer_than("a", Some("u1"), Some("100")), None);
        w.record("a", Some("u1"), Some("120"), 1);
        w.forget("a");
        assert_eq!(w.newer_than("a", Some("u1"), Some("100")), None);
    }
}
