//! Semver precedence, shared by both dialects: the numeric triple, then a release above any of its
//! prereleases, then the prereleases compared by the dialect's own identifier rule. Build metadata
//! never takes part, so the equality this defines ignores it too.

use std::cmp::Ordering;

/// Compares two versions given their triples, whether each has a prerelease, and the dialect's
/// prerelease comparison (called only when both have one).
pub(crate) fn compare(
    a: (u64, u64, u64),
    b: (u64, u64, u64),
    pre: (bool, bool),
    compare_pre: impl FnOnce() -> Ordering,
) -> Ordering {
    a.cmp(&b).then_with(|| match pre {
        (false, false) => Ordering::Equal,
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (true, true) => compare_pre(),
    })
}

/// Implements `PartialOrd`, `PartialEq` and `Eq` from a type's `Ord`, so that equality is
/// precedence equality (build metadata ignored) rather than field equality.
macro_rules! ord_by_precedence {
    ($t:ty) => {
        impl PartialOrd for $t {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }

        impl PartialEq for $t {
            fn eq(&self, o: &Self) -> bool {
                self.cmp(o).is_eq()
            }
        }

        impl Eq for $t {}
    };
}

pub(crate) use ord_by_precedence;
