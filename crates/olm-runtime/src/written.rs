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

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The last value written per object: a status keyed by the object's name, or a whole object
/// keyed by where it lives.
pub struct Written<S, K = String> {
    entries: Mutex<HashMap<K, Entry<S>>>,
}

struct Entry<S> {
    uid: String,
    resource_version: u64,
    value: S,
    at: Instant,
}

impl<S, K> Default for Written<S, K> {
    fn default() -> Self {
        Written {
            entries: Mutex::default(),
        }
    }
}

impl<S: Clone, K: Hash + Eq> Written<S, K> {
    /// The value last written to `key` when the observed copy (`uid`, `resource_version`)
    /// predates that write: what the object really has, to start from instead of the copy.
    /// `None` when the copy is current (or newer, or of unknown age).
    pub fn newer_than<Q>(
        &self,
        key: &Q,
        uid: Option<&str>,
        resource_version: Option<&str>,
    ) -> Option<S>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = lock(&self.entries);
        let entry = entries.get(key)?;
        (entry.uid == uid.unwrap_or_default() && predates(resource_version, entry.resource_version))
            .then(|| entry.value.clone())
    }

    /// The value last written to `key` when the cache has no copy (`None`) or an older one:
    /// for objects just created or updated whose watch event has not arrived yet.
    pub fn ahead_of<Q>(&self, key: &Q, cached_version: Option<Option<&str>>) -> Option<S>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = lock(&self.entries);
        let entry = entries.get(key)?;
        match cached_version {
            None => Some(entry.value.clone()),
            Some(rv) => predates(rv, entry.resource_version).then(|| entry.value.clone()),
        }
    }

    /// Records a write the API server answered with `resource_version`.
    pub fn record(&self, key: K, uid: Option<&str>, resource_version: Option<&str>, value: S) {
        let Some(resource_version) = resource_version.and_then(|rv| rv.parse().ok()) else {
            // Without a comparable version no later copy can be told stale: forget instead.
            lock(&self.entries).remove(&key);
            return;
        };
        lock(&self.entries).insert(
            key,
            Entry {
                uid: uid.unwrap_or_default().to_owned(),
                resource_version,
                value,
                at: Instant::now(),
            },
        );
    }

    /// How long ago the value of `key` was recorded; `None` when nothing is.
    pub fn age<Q>(&self, key: &Q) -> Option<Duration>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        lock(&self.entries).get(key).map(|e| e.at.elapsed())
    }

    /// The watch delivered `key` at `resource_version` (an update or its deletion): a record
    /// that is not newer is dropped, the cache now knows at least as much.
    pub fn seen<Q>(&self, key: &Q, resource_version: Option<&str>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut entries = lock(&self.entries);
        if entries
            .get(key)
            .is_some_and(|e| !predates(resource_version, e.resource_version))
        {
            entries.remove(key);
        }
    }

    /// Drops every record whose key `gone` selects: their watch stopped or starts over, so
    /// nothing will tell when they are stale.
    pub fn forget_where(&self, gone: impl Fn(&K) -> bool) {
        lock(&self.entries).retain(|k, _| !gone(k));
    }

    /// Drops what was recorded for `key` (the object is gone).
    pub fn forget<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        lock(&self.entries).remove(key);
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
        let w: Written<&str> = Written::default();
        w.record("a".into(), Some("u1"), Some("120"), "Installed");
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
        let w: Written<i32> = Written::default();
        w.record("a".into(), Some("u1"), Some("120"), 1);
        w.record("a".into(), Some("u1"), Some("opaque"), 1);
        assert_eq!(w.newer_than("a", Some("u1"), Some("100")), None);
        w.record("a".into(), Some("u1"), Some("120"), 1);
        assert!(w.age("a").is_some_and(|age| age < Duration::from_secs(60)));
        w.forget("a");
        assert_eq!(w.age("a"), None);
        assert_eq!(w.newer_than("a", Some("u1"), Some("100")), None);
    }

    #[test]
    fn an_object_written_is_read_until_its_watch_event_arrives() {
        let w: Written<&str> = Written::default();
        w.record("cm".into(), Some("u1"), Some("50"), "as written");
        // Not in the cache yet, or only an older copy: the write is what exists.
        assert_eq!(w.ahead_of("cm", None), Some("as written"));
        assert_eq!(w.ahead_of("cm", Some(Some("40"))), Some("as written"));
        assert_eq!(w.ahead_of("cm", Some(Some("50"))), None);
        // An older event leaves the record; the event of the write (or a later one, a
        // deletion included) drops it, so a deleted object is seen deleted.
        w.seen("cm", Some("40"));
        assert_eq!(w.ahead_of("cm", None), Some("as written"));
        w.seen("cm", Some("61"));
        assert_eq!(w.ahead_of("cm", None), None);
    }

    #[test]
    fn records_of_a_stopped_watch_are_dropped() {
        let w: Written<&str> = Written::default();
        w.record("a/cm".into(), None, Some("5"), "cm");
        w.record("b/sa".into(), None, Some("6"), "sa");
        w.forget_where(|k| k.starts_with("a/"));
        assert_eq!(w.ahead_of("a/cm", None), None);
        assert_eq!(w.ahead_of("b/sa", None), Some("sa"));
    }
}
