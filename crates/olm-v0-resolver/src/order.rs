//! The resolver's preferences: a channel's entries from head to tail, catalogs by priority, and
//! candidates by catalog, default channel, package and channel (upstream's `sortChannel`,
//! `sortBundles` and `sortableSnapshots`).

use std::collections::{HashMap, HashSet};

use super::entry::{Entry, SourceKey};

/// Why a channel's entries have no order: upstream's `sortChannel` errors, in its words (they
/// reach Subscriptions' `ResolutionFailed` message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// Every entry is replaced or skipped by another.
    #[error(
        "no channel heads (entries not replaced by another entry) found in channel {channel:?} of package {package:?}"
    )]
    NoHeads {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// Following `replaces` from `head` comes back to an entry already passed.
    #[error(
        "a cycle exists in the chain of replacement beginning with {head:?} in channel {channel:?} of package {package:?}"
    )]
    Cycle {
        /// The head the chain starts at.
        head: String,
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// More than one head: each chain as `first...last` (or its one entry).
    #[error(
        "a unique replacement chain within a channel is required to determine the relative order between channel entries, but {} replacement chains were found in channel {channel:?} of package {package:?}: {}",
        .chains.len(),
        .chains.join(", ")
    )]
    SeveralChains {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The chains, by their ends.
        chains: Vec<String>,
    },
}

/// A channel's entries along its unique replacement chain from head to tail, without the
/// skipped ones.
///
/// # Errors
///
/// No head, a cycle, or several chains ([`OrderError`]).
pub fn sort_channel<'a>(bundles: &[&'a Entry]) -> Result<Vec<&'a Entry>, OrderError> {
    let Some(first) = bundles.first() else {
        return Ok(Vec::new());
    };
    let (package, channel) = (&first.package, &first.channel);
    let by_name: HashMap<&str, usize> = bundles
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.as_str(), i))
        .collect();
    let mut replaced = vec![false; bundles.len()];
    let mut replaces: Vec<Option<usize>> = vec![None; bundles.len()];
    let mut skipped: HashSet<&str> = HashSet::new();
    for (i, b) in bundles.iter().enumerate() {
        if let Some(&r) = by_name
            .get(b.replaces.as_str())
            .filter(|_| !b.replaces.is_empty())
        {
            replaced[r] = true;
            replaces[i] = Some(r);
        }
        for skip in &b.skips {
            if let Some(&r) = by_name.get(skip.as_str()) {
                replaced[r] = true;
                skipped.insert(skip.as_str());
            }
        }
    }
    let heads: Vec<usize> = (0..bundles.len()).filter(|&i| !replaced[i]).collect();
    if heads.is_empty() {
        return Err(OrderError::NoHeads {
            package: package.clone(),
            channel: channel.clone(),
        });
    }
    let mut chains: Vec<Vec<&'a Entry>> = Vec::new();
    for &head in &heads {
        let mut chain = Vec::new();
        let mut visited = vec![false; bundles.len()];
        let mut current = head;
        loop {
            visited[current] = true;
            if !skipped.contains(bundles[current].name.as_str()) {
                chain.push(bundles[current]);
            }
            let Some(next) = replaces[current] else { break };
            if visited[next] {
                return Err(OrderError::Cycle {
                    head: bundles[head].name.clone(),
                    package: package.clone(),
                    channel: channel.clone(),
                });
            }
            current = next;
        }
        chains.push(chain);
    }
    if chains.len() > 1 {
        let chains: Vec<String> = chains
            .iter()
            .map(|chain| match chain.as_slice() {
                [] => "[]".to_owned(),
                [only] => only.name.clone(),
                [first, .., last] => format!("{}...{}", first.name, last.name),
            })
            .collect();
        return Err(OrderError::SeveralChains {
            package: package.clone(),
            channel: channel.clone(),
            chains,
        });
    }
    Ok(chains.pop().unwrap_or_default())
}

/// Entries grouped by (package, channel) in first-seen order, each group sorted along its chain,
/// groups ordered default channel first, then package, then channel name.
pub fn sort_by_channel<'a>(entries: &[&'a Entry]) -> Result<Vec<&'a Entry>, OrderError> {
    let mut groups: Vec<(&str, &str, bool, Vec<&'a Entry>)> = Vec::new();
    for e in entries {
        // Installed CSVs have no channel and no replaces: each is its own chain.
        let group = groups.iter_mut().find(|(p, c, d, g)| {
            *p == e.package
                && *c == e.channel
                && *d == e.default_channel
                && !(e.catalog.is_virtual() && g[0].name != e.name)
        });
        match group {
            Some(group) => group.3.push(e),
            None => groups.push((&e.package, &e.channel, e.default_channel, vec![e])),
        }
    }
    groups.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| a.0.cmp(b.0))
            .then_with(|| a.1.cmp(b.1))
    });
    let mut out = Vec::with_capacity(entries.len());
    for (_, _, _, group) in groups {
        out.extend(sort_channel(&group)?);
    }
    Ok(out)
}

/// A catalog with what ranks it.
#[derive(Debug, Clone, Copy)]
pub struct Ranked<'a> {
    /// The catalog.
    pub key: &'a SourceKey,
    /// Its `spec.priority`.
    pub priority: i64,
}

/// Catalogs in preference order: the preferred namespace's installed CSVs, then the preferred
/// catalog, then higher priority, then catalogs in the preferred namespace, then by name (and,
/// to be total where upstream is not, by namespace).
pub fn sort_catalogs(catalogs: &mut [Ranked<'_>], preferred: Option<&SourceKey>, namespace: &str) {
    let rank = |c: &Ranked<'_>| {
        (
            !(c.key.is_virtual() && c.key.namespace == namespace),
            Some(c.key) != preferred,
            std::cmp::Reverse(c.priority),
            c.key.namespace != namespace,
        )
    };
    catalogs.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.key.name.cmp(&b.key.name))
            .then_with(|| a.key.namespace.cmp(&b.key.namespace))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, replaces: &str, skips: &[&str]) -> Entry {
        Entry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| (*s).to_owned()).collect(),
            skip_range: None,
            version: None,
            provided_apis: vec![],
            required_apis: vec![],
            properties: vec![],
            bundle_path: String::new(),
            package: "p".into(),
            channel: "c".into(),
            default_channel: false,
            catalog: SourceKey::new("cat", "ns"),
            subscription: None,
            parsed: Default::default(),
        }
    }

    fn names(entries: &[&Entry]) -> Vec<String> {
        entries.iter().map(|e| e.name.clone()).collect()
    }

    /// (name, channel entries, the sorted names or the error)
    type Case = (
        &'static str,
        Vec<Entry>,
        Result<Vec<&'static str>, &'static str>,
    );

    // Vectors from upstream's resolver_test.go `TestSortChannel`.
    #[test]
    fn sort_channel_table() {
        let cases: Vec<Case> = vec![
            (
                "wrinkle-free chain",
                vec![entry("a", "b", &[]), entry("b", "", &[])],
                Ok(vec!["a", "b"]),
            ),
            (
                "replaced by bundle outside of channel",
                vec![entry("a", "b", &[])],
                Ok(vec!["a"]),
            ),
            (
                "skips",
                vec![
                    entry("a", "b", &["c"]),
                    entry("b", "", &[]),
                    entry("c", "", &[]),
                ],
                Ok(vec!["a", "b"]),
            ),
            (
                "cycle",
                vec![entry("a", "b", &[]), entry("b", "a", &[])],
                Err(
                    "no channel heads (entries not replaced by another entry) found in channel \"c\" of package \"p\"",
                ),
            ),
            (
                "cycle below head",
                vec![
                    entry("a", "b", &[]),
                    entry("b", "c", &[]),
                    entry("c", "b", &[]),
                ],
                Err(
                    "a cycle exists in the chain of replacement beginning with \"a\" in channel \"c\" of package \"p\"",
                ),
            ),
            (
                "two chains",
                vec![
                    entry("a", "", &[]),
                    entry("b", "c", &[]),
                    entry("c", "", &[]),
                ],
                Err(
                    "a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel \"c\" of package \"p\": a, b...c",
                ),
            ),
            ("nothing", vec![], Ok(vec![])),
        ];
        for (name, entries, want) in cases {
            let refs: Vec<&Entry> = entries.iter().collect();
            let got = sort_channel(&refs)
                .map(|s| names(&s))
                .map_err(|e| e.to_string());
            match want {
                Ok(want) => assert_eq!(got.unwrap(), want, "{name}"),
                Err(want) => assert_eq!(got.unwrap_err(), want, "{name}"),
            }
        }
    }

    #[test]
    fn catalogs_rank_as_upstream() {
        let existing = SourceKey::existing("ns");
        let preferred = SourceKey::new("mine", "other");
        let high = SourceKey::new("high", "global");
        let local = SourceKey::new("zz", "ns");
        let remote = SourceKey::new("aa", "global");
        let mut catalogs = vec![
            Ranked {
                key: &remote,
                priority: 0,
            },
            Ranked {
                key: &local,
                priority: 0,
            },
            Ranked {
                key: &high,
                priority: 10,
            },
            Ranked {
                key: &preferred,
                priority: -5,
            },
            Ranked {
                key: &existing,
                priority: 0,
            },
        ];
        sort_catalogs(&mut catalogs, Some(&preferred), "ns");
        let order: Vec<&str> = catalogs.iter().map(|c| c.key.name.as_str()).collect();
        assert_eq!(order, vec!["@existing", "mine", "high", "zz", "aa"]);
    }
}
